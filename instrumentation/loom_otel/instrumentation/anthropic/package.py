_instruments = ("anthropic >= 0.47",)
