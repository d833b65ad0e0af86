# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "interpolate": "interpolate",
    "can_use_interpolate": "interpolate",
    "interpolate_reference": "interpolate",
    "rasterize": "rasterize",
    "can_use_rasterize": "rasterize",
    "rasterize_reference": "rasterize",
    "uv_inpaint": "uv_inpaint",
    "can_use_uv_inpaint": "uv_inpaint",
    "uv_inpaint_reference": "uv_inpaint",
    "uv_rasterize": "uv_rasterize",
    "can_use_uv_rasterize": "uv_rasterize",
    "uv_rasterize_reference": "uv_rasterize",
    "vertex_inpaint": "vertex_inpaint",
    "can_use_vertex_inpaint": "vertex_inpaint",
    "vertex_inpaint_reference": "vertex_inpaint",
}

OPS: dict[str, str] = {
    "ext.interpolate": "interpolate",
    "ext.rasterize": "rasterize",
    "ext.uv_inpaint": "uv_inpaint",
    "ext.uv_rasterize": "uv_rasterize",
    "ext.vertex_inpaint": "vertex_inpaint",
}
