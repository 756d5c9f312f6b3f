"""What ``ember.cuda.get_device_properties`` returns: cupy's ``cudaDeviceProp`` dict under
torch's attribute names (torch.cuda._CudaDeviceProperties)."""

from __future__ import annotations

# torch's name -> the cudaDeviceProp field cupy reports (CUDA 13 dropped the clock rates)
_FIELDS = {"major": "major", "minor": "minor", "total_memory": "totalGlobalMem",
           "multi_processor_count": "multiProcessorCount", "is_integrated": "integrated",
           "is_multi_gpu_board": "isMultiGpuBoard", "max_threads_per_multi_processor": "maxThreadsPerMultiProcessor",
           "max_threads_per_block": "maxThreadsPerBlock", "warp_size": "warpSize",
           "regs_per_multiprocessor": "regsPerMultiprocessor", "shared_memory_per_block": "sharedMemPerBlock",
           "shared_memory_per_block_optin": "sharedMemPerBlockOptin",
           "shared_memory_per_multiprocessor": "sharedMemPerMultiprocessor", "L2_cache_size": "l2CacheSize",
           "pci_bus_id": "pciBusID", "pci_device_id": "pciDeviceID", "pci_domain_id": "pciDomainID",
           "memory_bus_width": "memoryBusWidth", "clock_rate": "clockRate", "memory_clock_rate": "memoryClockRate"}


def _text(value) -> str:
    return value.decode(errors="replace").rstrip("\0") if isinstance(value, bytes) else str(value)


def _uuid(raw) -> str:
    """The device's 16-byte UUID in the 8-4-4-4-12 hex form nvidia-smi prints after 'GPU-'."""
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}" if len(h) == 32 else h


class _CudaDeviceProperties:
    """One CUDA device's properties: ``name``, ``major``/``minor`` (compute capability),
    ``total_memory`` (bytes), ``multi_processor_count``, ``L2_cache_size`` (bytes),
    ``warp_size``, the shared-memory sizes (bytes), the PCI ids, ``uuid``, and the others of
    ``_FIELDS``; a field the CUDA version at hand does not report is None."""

    def __init__(self, props: dict):
        self.name = _text(props.get("name", ""))
        for attr, field in _FIELDS.items():
            setattr(self, attr, props.get(field))
        self.uuid = _uuid(props["uuid"]) if props.get("uuid") is not None else None

    def __repr__(self):
        mib = 1024 * 1024
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={(self.total_memory or 0) // mib}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, L2_cache_size={(self.L2_cache_size or 0) // mib}MB)")
