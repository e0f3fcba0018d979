"""AWS Neuron backend for kernel-plugins (device type ``neuron``, native TorchNeuron backend).

Installing this distribution registers the ``neuron`` backend through the
``kernel_plugins`` entry-point group; the hooks live in :mod:`kernel_plugins_neuron.hooks`.
Importing this package imports neither torch nor ``torch_neuronx``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
