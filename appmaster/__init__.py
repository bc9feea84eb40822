"""What runs in the ApplicationMaster (or in the client's process for ``local``): the
ResourceManager, and a JobMaster per job."""
