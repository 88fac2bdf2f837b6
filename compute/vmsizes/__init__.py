"""The VM-size catalog (pure): the seed's series (`series`), each size's vCPUs, memory and GPUs (`sizes`), and the
whole-node shape a size gives after the node's system reserve (`reserve`). Importers use this package's names."""
from .series import (  # noqa: F401
    ADDED_SERIES,
    BOTH,
    CATEGORIES,
    CLUSTER,
    INSTANCE,
    ISOLATED_SIZES,
    RETIRED_2023,
    RETIRED_2024,
    SERIES,
    UNLISTED_RETIRED,
    Series,
    isolated_sizes_of,
    series_named,
    series_of_size,
    series_rows,
    size_problem,
    size_row,
    size_rows,
    sizes_of,
    unknown_size,
)
from .sizes import INSTANCE_TYPE_LABEL, SIZES, VmSize, size_shape, vm_size  # noqa: F401
