"""The analyst side: consume complete, signed releases and load them into pandas."""
