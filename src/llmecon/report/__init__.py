"""Result objects to JSON dicts, tables and figures: the views the CLI and the web render."""
