"""``python -m llmecon`` runs the command line."""

from .cli import main

main()
