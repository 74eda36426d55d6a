"""The request guard: reasoning read back for audit never becomes an instruction."""
