_instruments = ("anthropic >= 1.6",)
