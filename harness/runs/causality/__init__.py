"""The causality protocol as the harness runs it (seed 004 §6.2.3): the protocol
(:mod:`.protocol`), its checks (:mod:`.checks`), the caching audit (:mod:`.caching`), the variants of a
stream it runs (:mod:`.variants`), the scored replay (:mod:`.replay`) and the sequence-mode checks
(:mod:`.sequence`). Empty on purpose: importing one module of the audit (the online session's own audit
uses :mod:`.variants`) does not import the protocol and everything it draws on."""
