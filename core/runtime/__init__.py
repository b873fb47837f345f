"""Process-level infrastructure shared by the layers above: offline switches set before native
libraries load, optional dependencies, retries and credentials for remote services, worker-process
lifetime, memory release, and the code fingerprints that key caches. Imports nothing of grounded
but :mod:`grounded.errors`; importing this package loads none of its modules."""
