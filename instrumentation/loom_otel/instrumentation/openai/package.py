_instruments = ("openai >= 3.57",)
