"""The interactive front end: the app, its keys, its slash commands and the terminal confirmation."""
