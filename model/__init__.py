"""The model pipeline, by stage (model/README.md): python3 -m model.<stage>.<step>."""
