------------------------- MODULE MCBacktalkGroups -------------------------
(***************************************************************************)
(* A larger world for BacktalkGroups.tla, the one bench/explore-vs-tlc.sh  *)
(* checks with TLC and with `specstorm explore`: 4 workers over 6 events   *)
(* of 3 fingerprints, three of them retried by a second worker, and 4      *)
(* resolves.  The spec fixes its world in definitions, so MCBacktalkGroups *)
(* .cfg overrides them with these.  Queues differ in length: a worker is   *)
(* active until the end of its own queue (the spec's Active uses QLen).    *)
(***************************************************************************)
EXTENDS BacktalkGroups

MCEvents  == {"e1", "e2", "e3", "e4", "e5", "e6"}
MCFps     == {"f1", "f2", "f3"}
MCFpOf    == [e \in MCEvents |->
                CASE e \in {"e1", "e2"} -> "f1"
                  [] e \in {"e3", "e4"} -> "f2"
                  [] OTHER             -> "f3"]
MCWorkers == {"w1", "w2", "w3", "w4"}
MCQueue   == [w \in MCWorkers |->
                CASE w = "w1" -> <<"e1", "e2", "e3">>
                  [] w = "w2" -> <<"e1", "e4">>
                  [] w = "w3" -> <<"e2", "e5">>
                  [] w = "w4" -> <<"e4", "e6">>]
\* The longest queue: TypeOK's bound on idx.
MCQLen    == 3
MCActive(w) == idx[w] <= Len(MCQueue[w])
=============================================================================
