"""Operations plumbing: the embedded broker, start-up, service discovery, logging and re-publishing from the ledger."""
