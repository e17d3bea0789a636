"""bargein.releases — versioned Hugging Face releases.

    build_release(out_dir, name=..., version=..., sources=ReleaseSources(...))   # .build
    verify_release(dir) / read_manifest(dir) / bump(version, kind)               # .manifest
    diff_releases(a_dir, b_dir).suggested_bump                                   # .diff
    push_release(dir, "org/name", dry_run=True) / pull_release("org/name@v1.0.0") # .hub
    load_config(dir, "ihbench", "test") / iter_rows(...) / decode_audio(cell)     # .reader

Modules are imported on demand (the CLI stays fast); see each module's docstring.
"""
