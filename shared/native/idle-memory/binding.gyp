{
  "targets": [
    {
      "target_name": "idle_memory",
      "sources": ["idle-memory.c"]
    },
    {
      "target_name": "v8_low_memory",
      "sources": ["v8-low-memory.cc"]
    }
  ]
}
