"""The VM-size catalog (pure): the seed's series (`series`), and each size's vCPUs, memory and GPUs as a shape
(`sizes`). Importers use this package's names."""
from .series import (  # noqa: F401
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
)
from .sizes import SIZES, VmSize, size_shape, vm_size  # noqa: F401
