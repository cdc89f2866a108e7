"""Context shared between agents: namespaces with ACLs and TTLs, and the item store
behind LangGraph's ``BaseStore``."""
