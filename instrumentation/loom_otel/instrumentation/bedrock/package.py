_instruments = ("botocore >= 1.37",)
