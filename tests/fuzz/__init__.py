"""Fuzz suite of issue #14: generated bad inputs (corpus.py), the contract (contract.py), tests."""

# grounded first: it sets its offline defaults (e.g. onnxruntime telemetry off) before pymupdf
# loads onnxruntime for its layout model
import grounded  # noqa: F401
