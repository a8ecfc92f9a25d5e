"""What goes in: hardware, model and stack specs, layouts, and the symbolic counts."""
