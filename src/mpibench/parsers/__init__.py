"""Parsers: pure functions from a tool's output text to store result rows.

core_jsonl     mpibench-core JSON Lines (native runs)
imb, osu, nccl, netpipe
               outputs of other tools, for `mpibench import`; detect.parse_bytes recognises
               which one a file holds from its content.
"""
