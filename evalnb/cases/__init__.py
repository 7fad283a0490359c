"""The cases stage: cases files (JSONL, JSON, YAML, CSV), experiment files, and the suites
shipped inside the package (:mod:`evalnb.cases.suites`)."""

from evalnb.cases._design import IMPORTED, ORDERS, JudgeSpec, RunDesign, cases_from_manifest
from evalnb.cases._experiment import Experiment, load_experiment, parse_value, parse_variant
from evalnb.cases._files import (
    CASE_FIELDS,
    CSV_COLUMNS,
    DEFAULT_FIELDS,
    SUFFIXES,
    file_sha256,
    load_cases,
    validate_defaults,
)
from evalnb.cases._yaml import YamlDocument, expanded_nodes, read_yaml, safe_loader

__all__ = [
    "CASE_FIELDS",
    "CSV_COLUMNS",
    "DEFAULT_FIELDS",
    "IMPORTED",
    "ORDERS",
    "SUFFIXES",
    "Experiment",
    "JudgeSpec",
    "RunDesign",
    "YamlDocument",
    "cases_from_manifest",
    "expanded_nodes",
    "file_sha256",
    "load_cases",
    "load_experiment",
    "parse_value",
    "parse_variant",
    "read_yaml",
    "safe_loader",
    "validate_defaults",
]
