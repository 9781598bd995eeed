{
  "targets": [
    {
      "target_name": "idle_memory",
      "sources": ["idle-memory.c"]
    }
  ]
}
