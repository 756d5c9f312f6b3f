"""The Open Inference Protocol's gRPC service (``inference.proto``, package ``inference``).

``inference_pb2`` (the messages) and ``inference_pb2_grpc`` (the service) are generated from
the .proto by grpcio-tools when ember-serve is built; importing them needs the ``grpc``
extra (grpcio, protobuf).
"""
