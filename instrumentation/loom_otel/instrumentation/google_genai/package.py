_instruments = ("google-genai >= 3.6",)
