"""Backends that ship inside the core: cpu, cuda, rocm, xpu and metal.

Each is a plugin module registered through the same hooks as third-party backends.
"""
