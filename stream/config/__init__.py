"""Configuration: service settings (one declaration per setting), secrets and the feeds file."""
