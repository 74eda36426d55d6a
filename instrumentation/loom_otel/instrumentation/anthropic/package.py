_instruments = ("anthropic >= 2.14",)
