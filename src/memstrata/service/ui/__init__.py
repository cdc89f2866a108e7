"""The memory browser served by ``memstrata serve`` at ``/ui`` (docs/ui.md)."""
