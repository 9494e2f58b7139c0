"""The results format: a versioned protobuf schema, its codec and the one reader and writer of files."""

from tuned_kernels.results.files import open_results, read_results, write_results
from tuned_kernels.results.merge import merge_results

__all__ = ["merge_results", "open_results", "read_results", "write_results"]
