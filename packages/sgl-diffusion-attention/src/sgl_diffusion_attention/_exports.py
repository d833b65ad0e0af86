# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "attention": "attention",
    "can_use_attention": "attention",
    "attention_reference": "attention",
    "attention_autotune_cache": "attention",
    "AttentionError": "attention_error",
    "attention_error": "attention_error",
    "BlockMap": "block_map",
    "video_block_map": "block_map",
    "video_tile_order": "block_map",
    "block_map_from_mask": "block_map",
    "token_mask": "block_map",
    "block_sparse_attention": "block_sparse_attention",
    "can_use_block_sparse_attention": "block_sparse_attention",
    "block_sparse_attention_reference": "block_sparse_attention",
    "merge_attention_states": "merge_attention_states",
    "can_use_merge_attention_states": "merge_attention_states",
    "merge_attention_states_reference": "merge_attention_states",
    "quantized_attention": "quantized_attention",
    "can_use_quantized_attention": "quantized_attention",
    "quantized_attention_reference": "quantized_attention",
    "usp_attention": "usp_attention",
    "can_use_usp_attention": "usp_attention",
    "usp_attention_reference": "usp_attention",
    "UspMesh": "usp_mesh",
    "init_usp": "usp_mesh",
    "usp_shard": "usp_mesh",
    "usp_gather": "usp_mesh",
}

OPS: dict[str, str] = {
    "attention.attention": "attention",
    "attention.block_sparse_attention": "block_sparse_attention",
    "attention.merge_attention_states": "merge_attention_states",
    "attention.quantized_attention": "quantized_attention",
    "attention.usp_attention": "usp_attention",
}
