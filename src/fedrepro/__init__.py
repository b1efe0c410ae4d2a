"""fedrepro: regenerate the figures and tables of four federated-learning works, with provenance."""

__version__ = "0.1.0"
