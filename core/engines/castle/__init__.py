"""CASTLE: delay-bounded anonymization of a stream by adaptive clustering (see :mod:`.engine`)."""
