"""Resume: secret-free session snapshots and repair of broken tool-call histories."""
