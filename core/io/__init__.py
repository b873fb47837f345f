"""Bytes in and out: the lossless JSON codec of trees and chunks (:mod:`.codec`), atomic file writes
and output guards (:mod:`.atomic`), the lossy Markdown export (:mod:`.markdown`), the chunk
metadata of the store surfaces (:mod:`.chunk_metadata`) and the JSON Lines reader of input files
people write (:mod:`.jsonl`). Imports only the model and runtime layers."""
