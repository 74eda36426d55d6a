"""Who may read: the one reading rule, retention, owner-only directories and the viewer's address of a call."""
