"""The shapes of Inductor's internals this edge patches (`internals.holds` checks each before its patch)."""

from __future__ import annotations

from tuned_kernels.internals import Shape

INDUCTOR_GRAPH_LOAD = Shape(
    "torch._inductor.output_code", "CompiledFxGraph", ("after_deserialization",),
    "a cached graph whose code does not load ends the program, as Inductor does it",
)  # fmt: skip
INDUCTOR_FINAL_CHOICES = (
    Shape("torch._inductor.ir", "MultiTemplateBuffer", ("finalize_as_triton_caller",),
          "Inductor's final GEMM choices are not kept; a served program may choose otherwise"),
    Shape("torch._inductor.select_algorithm", "ExternKernelCaller", ("output_node",),
          "Inductor's final GEMM choices are not kept; a served program may choose otherwise"),
    Shape("torch._inductor.scheduler", "Scheduler", ("finalize_multi_template_buffers",),
          "the fusions into timed GEMMs are not kept; a served program may fuse otherwise"),
)  # fmt: skip

INDUCTOR_RBLOCK_SCALING = Shape(
    "torch._inductor.runtime.triton_heuristics", "CachingAutotuner",
    ("_dynamic_scale_rblock", "autotune_to_one_config"),
    "a reduction kernel's halved-block copy is timed at each first call, as without a bundle",
    calls=("precompile", "_dynamic_scale_rblock"),
)  # fmt: skip

INDUCTOR_STATIC_RECHECK = Shape(
    "torch._inductor.runtime.triton_heuristics", "CachingAutotuner",
    ("recheck_autotune_cache", "_precompile_config"),
    "a served graph's one-config kernel whose stored config is another runs coordinate descent at its first call",
    calls=("recheck_autotune_cache", "check_autotune_cache"),
)  # fmt: skip

INDUCTOR_CONFIG_TIMING = Shape(
    "torch._inductor.runtime.triton_heuristics", "CachingAutotuner", ("bench",),
    "a capture ranks generated kernels' configs as Inductor does, each call issued from the host",
    calls=("bench", "benchmarker"),
)  # fmt: skip

INDUCTOR_COMPILE_POOL = Shape(
    "torch._inductor.async_compile", "AsyncCompile", ("wakeup", "use_process_pool"),
    "Inductor's compile workers start at a served first call, as without a bundle",
)  # fmt: skip

INDUCTOR_GRAPH_KEY = Shape(
    "torch._inductor.codecache", "FxGraphHashDetails", ("__init__",),
    "graphs compiled with tuned-kernels on are not found by runs without it, nor the other way round",
    calls=("__init__", "save_config_portable"),
)  # fmt: skip

INDUCTOR_AUTOTUNE_CACHE_READ = Shape(
    "torch._inductor.runtime.autotune_cache", "AutotuneCache", ("read_best", "_read"),
    "a served graph's kernels whose configs were cached elsewhere are tuned again at the first call",
    calls=("_read", "local_cache"),
)  # fmt: skip

INDUCTOR_AUTOTUNE_CACHE_SAVE = Shape(
    "torch._inductor.runtime.autotune_cache", "AutotuneCache", ("save",),
    "a served graph's kernel tuned again at its first call writes its config under the capturing machine's path",
    calls=("save", "local_cache"),
)  # fmt: skip

INDUCTOR_CHOICES = (
    Shape("torch._inductor.lookup_table", "LookupTableChoices",
          ("_fallback", "can_fuse_vertical", "_generate_kernel_inputs_key"),
          "Inductor's GEMM choices and fusions are neither served nor captured; Inductor chooses as without a bundle"),
    Shape("torch._inductor", "select_algorithm", ("add_feedback_saver",),
          "Inductor's GEMM choices are neither served nor captured; Inductor chooses as without a bundle"),
)  # fmt: skip

INDUCTOR_CPP_WRITE = Shape(
    "torch._inductor", "codecache", ("write", "get_hash", "get_path"),
    "a graph's C++ objects a bundle brought are compiled again where torch is installed at another path",
)  # fmt: skip
INDUCTOR_CPP_LOAD = Shape(
    "torch._inductor.codecache", "CppCodeCache", ("load_async",),
    "a graph's C++ objects a bundle brought are compiled again where torch is installed at another path",
    calls=("load_async", "write"),
)  # fmt: skip

INDUCTOR_DEVICE_KEYS = Shape(
    "torch._inductor.codecache", "FxGraphCachePickler", ("dumps",),
    "a graph compiled on one GPU is compiled again on another GPU of the machine",
)  # fmt: skip
INDUCTOR_DEVICE_LOADS = Shape(
    "torch._inductor.codecache", "FxGraphCache", ("_lookup_graph", "cache_hit_post_compile", "iterate_over_candidates"),
    "a graph compiled on one GPU is compiled again on another GPU of the machine",
    calls=("_lookup_graph", "cache_hit_post_compile"),
)  # fmt: skip

DYNAMO_FRAMES = (
    Shape("torch._dynamo.convert_frame", "CatchErrorsWrapper", ("__call__",),
          "Dynamo traces each torch.compile'd function at its first call; the graph caches serve its graphs"),
    Shape("torch._dynamo.aot_compile", "AOTCompiledFunction", ("serialize", "source_info"),
          "Dynamo traces each torch.compile'd function at its first call; the graph caches serve its graphs"),
    Shape("torch._dynamo.aot_compile", "CompileArtifacts", ("check_compatibility",),
          "Dynamo traces each torch.compile'd function at its first call; the graph caches serve its graphs"),
    Shape("torch._dynamo.package", "SerializedCode", ("to_code_object", "from_code_object"),
          "Dynamo traces each torch.compile'd function at its first call; the graph caches serve its graphs"),
)  # fmt: skip

FRAME_COMPILE = (
    Shape("torch._inductor", "compile_fx", ("_compile_fx_inner", "fx_codegen_and_compile"),
          "no Dynamo frame is saved: torch's compile of it cannot be read through Inductor's cache",
          calls=("_compile_fx_inner", "fx_codegen_and_compile")),
    Shape("torch._inductor.codecache", "FxGraphCache",
          ("prepare_key", "load_with_key", "_save_graph", "cache_hit_post_compile", "_get_tmp_dir_for_key"),
          "no Dynamo frame is saved: torch's compile of it cannot be read through Inductor's cache"),
    Shape("torch._inductor.triton_bundler", "TritonBundler", ("collect",),
          "no Dynamo frame is saved: torch's compile of it cannot be read through Inductor's cache"),
    Shape("torch._inductor.output_code", "CompiledFxGraph", ("set_triton_bundle",),
          "no Dynamo frame is saved: torch's compile of it cannot be read through Inductor's cache"),
)  # fmt: skip

SHAPES = (
    INDUCTOR_GRAPH_LOAD,
    *INDUCTOR_CHOICES,
    INDUCTOR_AUTOTUNE_CACHE_READ,
    INDUCTOR_AUTOTUNE_CACHE_SAVE,
    INDUCTOR_GRAPH_KEY,
    *INDUCTOR_FINAL_CHOICES,
    INDUCTOR_RBLOCK_SCALING,
    INDUCTOR_STATIC_RECHECK,
    INDUCTOR_CONFIG_TIMING,
    INDUCTOR_COMPILE_POOL,
    INDUCTOR_CPP_WRITE,
    INDUCTOR_CPP_LOAD,
    INDUCTOR_DEVICE_KEYS,
    INDUCTOR_DEVICE_LOADS,
    *DYNAMO_FRAMES,
    *FRAME_COMPILE,
)
