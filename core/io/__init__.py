"""Bytes in and out: the lossless JSON codec of trees and chunks (:mod:`.codec`), atomic file writes
and output guards (:mod:`.atomic`), the lossy Markdown export (:mod:`.markdown`), the store
surfaces' codecs (boxes :mod:`.box_codec`, chunks :mod:`.chunk_codec`, the tree payload
:mod:`.tree_payload`, PDF info :mod:`.pdf_info`) and the JSON Lines reader of input files
people write (:mod:`.jsonl`). Imports only the model and runtime layers."""
