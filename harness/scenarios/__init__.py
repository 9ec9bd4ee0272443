"""What test processes use: a scenario's building blocks, the session they read, their
slots and progress events."""
