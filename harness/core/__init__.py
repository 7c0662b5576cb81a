"""What every shelf shares: the configuration, the controls CSV's rules, the vocabulary, errors, durations
and time windows, the state folder's layout. The bottom shelf: it imports nothing else of the harness."""
