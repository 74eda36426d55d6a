_instruments = ("openai >= 3.50",)
