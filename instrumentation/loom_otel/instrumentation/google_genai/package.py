_instruments = ("google-genai >= 2.20",)
