"""The ground floor: text sanitising, digit handling and private files. Standard library only; every layer may
import it, it imports no other part of hpctui."""
