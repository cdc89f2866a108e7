"""Long-term memory units and the pipeline that keeps them correct."""
