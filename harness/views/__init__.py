"""Pictures and words for people: the timeline report page (report), its dependency graph
(dependency_graph), and a sensor position as words (watermarks)."""
