"""setuptools' build backend, run on a copy of the checkout in a temporary folder.

A plain ``pip install .`` builds in the source tree, and setuptools leaves ``build/`` and
``mini_letta.egg-info/`` there. Here a wheel, its metadata and an sdist are built from a copy of
what they are made of (the files below), so the checkout stays as it was; an editable install
must point at the checkout itself and is setuptools' own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (build_editable, get_requires_for_build_editable,  # noqa: F401
                                   prepare_metadata_for_build_editable)

SOURCE = Path(__file__).resolve().parent.parent
# What the wheel and the sdist are made of (pyproject.toml's packages and data come from these).
PARTS = ("pyproject.toml", "README.md", "CHANGELOG.md", "mini_letta", "prompts", "tools", "build_backend")


@contextmanager
def _in_a_copy():
    with tempfile.TemporaryDirectory(prefix="mini-letta-build-") as folder:
        for name in PARTS:
            source = SOURCE / name
            if source.is_dir():
                shutil.copytree(source, Path(folder) / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            elif source.exists():
                shutil.copy2(source, Path(folder) / name)
        before = os.getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(before)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_directory = os.path.abspath(wheel_directory)
    metadata_directory = metadata_directory and os.path.abspath(metadata_directory)
    with _in_a_copy():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    metadata_directory = os.path.abspath(metadata_directory)
    with _in_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_sdist(sdist_directory, config_settings=None):
    sdist_directory = os.path.abspath(sdist_directory)
    with _in_a_copy():
        return _setuptools.build_sdist(sdist_directory, config_settings)


# setuptools runs its egg_info step to answer these too.
def get_requires_for_build_wheel(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_sdist(config_settings)
