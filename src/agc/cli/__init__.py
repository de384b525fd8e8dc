"""The command line: ``agc`` and ``agc-verify``. The only package that imports typer/rich."""
