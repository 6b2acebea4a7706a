"""The remote CLI (rolloutui_cli): its verbs built from the registry document, and its config file."""
