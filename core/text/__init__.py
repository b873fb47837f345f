"""The shared text-and-box index under chunking, grounding, vision and the adapters: the document
text of a tree (:mod:`.stream`), the tokenizer (:mod:`.tokenizer`), the token stream with character
spans, token ranges (:mod:`.groups`), the token bound (:mod:`.bound`), text splitting rules
(:mod:`.splitting`), chunk ids (:mod:`.ids`) and the one assembler that turns a token range into a
chunk with text, offsets and exact boxes (:mod:`.assembly`)."""
