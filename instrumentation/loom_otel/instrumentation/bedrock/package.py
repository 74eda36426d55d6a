_instruments = ("botocore >= 1.36.0",)
