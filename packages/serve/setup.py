"""ember-serve's one build step beyond setuptools' defaults: the gRPC modules.

``ember_serve/protos/inference_pb2.py`` and ``inference_pb2_grpc.py`` are generated from
``ember_serve/protos/inference.proto`` by grpcio-tools (a build requirement) whenever the
package is built: into the build folder for a wheel, into the source folder for an editable
install. They are never kept in version control. In a source checkout used without installing
(``PYTHONPATH=packages/serve/src``), ``python packages/serve/setup.py build_proto`` writes them
in place (it needs grpcio-tools in that Python).
"""

from __future__ import annotations

import os

from setuptools import Command, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
PROTO = os.path.join("ember_serve", "protos", "inference.proto")


def generate_protos(out_dir: str) -> None:
    """Compile the .proto into ``out_dir``/ember_serve/protos (the import path the modules expect)."""
    import importlib.resources

    from grpc_tools import protoc

    os.makedirs(os.path.join(out_dir, os.path.dirname(PROTO)), exist_ok=True)
    well_known = str(importlib.resources.files("grpc_tools") / "_proto")
    # -I src makes the generated _pb2_grpc import "from ember_serve.protos import inference_pb2"
    status = protoc.main(["grpc_tools.protoc", f"-I{SRC}", f"-I{well_known}", f"--python_out={out_dir}",
                          f"--grpc_python_out={out_dir}", os.path.join(SRC, PROTO)])
    if status != 0:
        raise RuntimeError(f"grpc_tools.protoc failed on {PROTO} (status {status})")


class BuildPyWithProtos(build_py):
    def run(self):
        if getattr(self, "editable_mode", False):
            generate_protos(SRC)  # an editable install imports from the source folder
            super().run()
            return
        super().run()
        generate_protos(self.build_lib)


class BuildProto(Command):
    description = "generate the gRPC modules in the source folder (for running from a checkout)"
    user_options: list = []

    def initialize_options(self):
        pass

    def finalize_options(self):
        pass

    def run(self):
        generate_protos(SRC)


setup(cmdclass={"build_py": BuildPyWithProtos, "build_proto": BuildProto})
