// Placeholder; see include/tailguard/.
