package microbench

func cornflakesLibraries() []Library { return nil }
